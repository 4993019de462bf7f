void fz(int N, int T, double alpha, double A[2 * N + 2 * T + 2][2 * N + T + 5], double B[N + T + 1][2 * N + 2 * T + 1], float C[N + 1]) {
  for (int t = 0; t < T; t++) {
    for (int i = 0; i <= N - 1; i += 2) {
      for (int j = 0; j < N; j++) {
        A[N - i][2] += 0.125 * A[N - i][4] * alpha + 0.0625 * A[N - i][3];
      }
    }
    for (int i = 1; i <= N - 1; i += 2) {
      for (int j = i + 1; j < N; j++) {
        A[2 * i + 2][j + 1] += 0.125 * A[2 * i + 2][j + 3] + 0.0625 * A[j + 2][2 * i + 3];
      }
    }
    for (int i = 0; i <= T - 1; i++) {
      if ((i) % 2 == 0 && (i) % 2 == 1) {
        A[i][i + 2] = 0.375 * A[i][i + 4] + 0.0625;
      } else {
        A[i + 1][i] = 0.125 * A[2 * i + 1][i] + 0.0625 * B[i][2 * i + N] + 0.0625;
      }
    }
    for (int i = 0; i <= N - 2; i++) {
      for (int j = 0; j < min(T, T - 1); j++) {
        C[i] = 0.125 * B[j][2 * N - i - 1] + 0.25 * B[i][j - i + N];
      }
    }
  }
}
