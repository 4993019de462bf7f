// expect: - dtype
// options: --size N=8
// namespace: {"A": ["float32", [8, 8]]}
// via: magic
void scale(int N, double alpha, double A[N][N], double B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      B[i][j] = alpha * A[i][j];
}
