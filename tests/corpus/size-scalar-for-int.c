// expect: - not a size parameter
// options: --size N=8,X=3
void isum(int N, int X[N], int Y[N]) {
  for (int i = 1; i < N; i++)
    Y[i] = X[i] + X[i - 1];
}
