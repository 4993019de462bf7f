// expect: - dtype
// options: --size N=8
// namespace: {"X": ["float64", [8]]}
void isum(int N, int X[N], int Y[N]) {
  for (int i = 1; i < N; i++)
    Y[i] = X[i] + X[i - 1];
}
