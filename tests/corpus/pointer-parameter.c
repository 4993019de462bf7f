// expect: ok
// options: --size N=8
void f(int N, double *A, double B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = A[i];
}
