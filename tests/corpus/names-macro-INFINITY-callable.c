// expect: 4:24 macro
// options: --size N=8
// via: callable
void gemm(int N, float INFINITY, float C[N][N], float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += INFINITY * A[i][k] * B[k][j];
}
