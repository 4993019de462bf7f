// expect: ok
// options: --size N=4,M=4
// namespace: {"A": ["float32", [4, 4]], "B": "=A"}
// two read-only arguments may share memory (C = A*A): only a written one may not
void sgemm(int N, int M, float C[N][M], float A[N][N], float B[N][M]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += A[i][k] * B[k][j];
}
