// expect: - share memory
// options: --size N=4,M=4
// namespace: {"C": ["float32", [4, 4]], "B": "=C[:, :]"}
// via: callable
void sgemm(int N, int M, float C[N][M], float A[N][N], float B[N][M]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += A[i][k] * B[k][j];
}
