// expect: - N=
// options: --size N=100000
void f(int N, double A[N][N][N]) {
  for (int i = 0; i < N; i++)
    A[i][i][i] = 1.0;
}
