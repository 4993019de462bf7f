// expect: ok
// options: --size N=24,sh0_A=1.5
void gemm(int N, float sh0_A, float C[N][N], float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += sh0_A * A[i][k] * B[k][j];
}
