// expect: ok
// options: --size N=24 --shared all
void gemm(int N, float alpha, float sh0_A[N][N], float sh0_B[N][N], float A[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        sh0_A[i][j] += alpha * sh0_B[i][k] * A[k][j];
}
