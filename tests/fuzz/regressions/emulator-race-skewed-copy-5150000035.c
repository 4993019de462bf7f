void fz(int N, int T, float A[2 * T + 2][2 * T + 1], double B[N + 1][2 * N + 1][N + 1], double C[N + 1], float D[N + 1][2 * N + 1][N + 1]) {
  for (int t = 0; t < T; t++) {
    for (int i = 0; i < T; i++) {
      A[2 * i + 1][2 * i + 1] += 0.0625 * A[i + 2][i];
    }
    for (int i = 0; i < N; i++) {
      if (i + 2 < T) {
        B[i][2 * i + 2][i + 1] = 0.125 * C[i] + 0.0625 * B[i + 1][2 * i + 1][i] + 0.25 * B[i][2 * i][i + 1];
      } else {
        D[N - i - 1][2 * i + 1][i] += 0.0625 * D[N - i - 1][2 * i + 1][i + 1];
      }
    }
  }
}
