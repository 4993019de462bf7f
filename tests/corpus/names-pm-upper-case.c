// expect: 3:24 reserved
// options: --size N=8
void gemm(int N, float PM_HELPER_MACROS, float C[N][N], float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += PM_HELPER_MACROS * A[i][k] * B[k][j];
}
