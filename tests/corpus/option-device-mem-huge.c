// expect: - between 1 byte and 1 TB
// options: --size N=8 --device-mem 2TB
void f(int N, double A[N][N], double B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      B[i][j] = 0.5 * A[i][j];
}
