// expect: 4:23 non-affine
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N * N; i++)
    B[0] = A[0];
}
