// expect: - integer
// options: --size N=4,k=1.5
void f(int N, int k, double A[N]) {
  for (int i = 0; i < N; i++)
    A[i] = 1.0;
}
