// expect: 4:31 step
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i += N)
    B[i] = A[i];
}
