// expect: - allows itself
// options: --size N=2000000000
// A size that fits a C int but no memory: refused for its bytes, quickly (the
// grid fill counts the box of tiles as a product, not point by point).
void gemm(int N, float alpha, float A[N][N], float B[N][N], float C[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      C[i][j] = 0.0f;
      for (int k = 0; k < N; k++)
        C[i][j] += alpha * A[i][k] * B[k][j];
    }
}
