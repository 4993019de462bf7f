// expect: - from 1 to 1048576
// options: --size N=8 --tile 99999999999999999999
void f(int N, double A[N][N], double B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      B[i][j] = 0.5 * A[i][j];
}
