/* gemm as people write it: a scalar accumulator, alpha and beta (issue 16's fp32 target) */
void gemm_scalar(int N, float alpha, float beta, float C[N][N], float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0.0f;
      for (int k = 0; k < N; k++)
        acc += A[i][k] * B[k][j];
      C[i][j] = alpha * acc + beta * C[i][j];
    }
}
