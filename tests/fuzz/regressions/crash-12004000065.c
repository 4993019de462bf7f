void fz(int N, int M, int T, double A[M + N + 1][2 * M + N + 1][M + N + 5], int B[M + 1][M + 1]) {
  for (int t = 0; t < T; t++) {
    for (int i = 1; i <= N - 2; i += 2) {
      A[i][i][4] = 0.0625 * A[i + 2][i][i + 2] + 0.0625 * A[i - 1][i - 1][i + 2];
    }
    for (int i = 0; i <= M - 2; i += 2) {
      A[i][i][3] += 0.0625 * A[i + 2][2 * i + 1][i + 2] + 0.125 * fmin(B[i][i], A[i][i][i]);
    }
  }
}
