// expect: 3:52 CUDA built-in
// options: --size N=8
void gemm(int N, float alpha, float C[N][N], float blockDim[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += alpha * blockDim[i][k] * B[k][j];
}
