// expect: ok
// options: --size N=24,sh0t0_A=1.5 --tile 32,32,16:4,4
void gemm(int N, float sh0t0_A, float C[N][N], float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += sh0t0_A * A[i][k] * B[k][j];
}
