// expect: 3:24 macro
// options: --size N=8
void gemm(int N, float NULL, float C[N][N], float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += NULL * A[i][k] * B[k][j];
}
