/* gemm: C += alpha * A * B (the README's example) */
void gemm(int N, float alpha, float C[N][N], float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += alpha * A[i][k] * B[k][j];
}
