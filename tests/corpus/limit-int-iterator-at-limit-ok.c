// expect: ok
// options: --size N=64
void f(int N, double A[N]) {
  for (int i = 0; i < N; i++)
    A[i] = 2.0 * A[i];
}
