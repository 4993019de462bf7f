// expect: ok
// options: --size N=20,kernel0=2.0
// via: callable
void gemm(int N, float kernel0, float C[N][N], float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += kernel0 * A[i][k] * B[k][j];
}
