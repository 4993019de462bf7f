void fz(int N, int K, double A[K + 1][2 * K + N + 1][K + 1], double B[K + N + 1][2 * K + 1][2 * K + N + 2], double C[K + 1]) {
  for (int i = 0; i < K; i += 2) {
    for (int j = 2; j < K; j++) {
      for (int k = K - 1; k >= 0; k--) {
        for (int l = 0; l < N; l++) {
          A[k][N - j + K - 1][K - i] = 0.125 * fmin(B[K - l + N - 1][k][N - i + K - 1], C[i]) + 0.0625 * A[k + 1][N - j + K - 1][K - i];
        }
      }
    }
    A[i + 1][i + K][i] = 0.125 * B[i + N][2 * i + 2][i + K + 2] + 0.0625;
  }
}
