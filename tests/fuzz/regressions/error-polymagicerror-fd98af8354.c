void fz(int N, double A[N + 1][2 * N + 2]) {
  for (int i = 1; i <= N - 2; i += 2) {
    A[i][1] += 0.125 * A[i + 1][N - i - 1];
    A[N - i - 1][2 * i + 1] = 0.125 * A[i][i];
  }
}
