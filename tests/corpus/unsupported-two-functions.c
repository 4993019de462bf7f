// expect: 8:6 one function
// options: --size N=8
void f(int N, double A[N][N], double B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      B[i][j] = 0.5 * A[i][j];
}
void g(int N, double A[N]) {
  A[0] = 1.0;
}
