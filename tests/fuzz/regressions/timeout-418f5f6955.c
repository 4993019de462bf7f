void fz(int N, int M, int K, double alpha, double A[3 * K + 2 * N + 1], float B[K + 1][K + 1]) {
  for (int i = 2; i < K; i++) {
    for (int j = 0; j < min(N, M - 1); j++) {
      for (int k = max(0, j - 3); k < min(N, j + 2); k++) {
        for (int l = 1; l <= K - 1; l++) {
          A[i - l + K + N] = 0.125 * A[2 * i + K + N] * alpha + 0.125 * fmin(A[i - l + K + N - 1], A[k + l + K + N]) + 0.0625;
        }
      }
      for (int k = 0; k < 5; k += 2) {
        if (j > 0) {
          for (int l = max(0, i - 3); l < min(K, i + 3); l++) {
            A[l - j + K + N] += 0.0625 * B[l][i] + 0.125 * A[l - j + K + N + 1] * alpha;
          }
        }
      }
    }
  }
}
