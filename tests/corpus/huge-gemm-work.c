// expect: - N=
// options: --size N=4000,M=4000
void sgemm(int N, int M, float C[N][M], float A[N][N], float B[N][M]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += A[i][k] * B[k][j];
}
