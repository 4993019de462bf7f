// expect: 6:17 (256 elements
// options: --size N=16 --target openmp
void f(int N, float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      B[i][j] = A[i][j + 1];
}
