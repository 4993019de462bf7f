// expect: 5:5 writes A[16]
// options: --size N=16
void f(int N, double A[N]) {
  for (int i = 0; i < N; i++)
    A[i + 1] = 2.0;
}
