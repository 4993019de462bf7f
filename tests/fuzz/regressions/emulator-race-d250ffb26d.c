void fz(int N, double alpha, double A[N + 4][2 * N + 2], float B[N + 1][N + 1]) {
  for (int i = 0; i <= N - 1; i++) {
    if (i >= 3) {
      A[2][2 * i] = 0.375 * A[3][2 * i] + 0.0625 * A[i][N - i - 1];
    }
    for (int j = 0; j < N; j++) {
      A[j + 1][i] = 0.25 * A[j + 1][i + 2] * alpha + 0.125 * B[i][N - j - 1];
    }
  }
}
