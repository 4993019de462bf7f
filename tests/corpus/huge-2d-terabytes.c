// expect: - N=
// options: --size N=2000000000
void scale(int N, double alpha, double A[N][N], double B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      B[i][j] = alpha * A[i][j];
}
