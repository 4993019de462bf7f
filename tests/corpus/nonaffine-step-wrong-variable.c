// expect: 4:26 step
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; N++)
    B[i] = A[i];
}
