// expect: 4:24 reserved
// options: --size N=8
// via: magic
void gemm(int N, float pm_r0_C, float C[N][N], float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += pm_r0_C * A[i][k] * B[k][j];
}
