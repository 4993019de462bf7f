// expect: 6:7 non-affine
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++) {
    double k = A[i];
    B[(int)k * (int)k] = A[i];
  }
}
