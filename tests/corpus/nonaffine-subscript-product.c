// expect: 6:9 non-affine
// options: --size N=8
void f(int N, double A[N], double B[N * N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      B[i * j] = A[i];
}
