// expect: 4:26 step
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 1; i < N; i *= 2)
    B[i] = A[i];
}
