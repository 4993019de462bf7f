void fz(int N, int M, int K, double alpha, double A[3 * K + M + N + 1][K + M + N + 3]) {
  for (int i = N - 1; i >= 1; i--) {
    for (int j = 0; j < i; j++) {
      A[j + K + 1][i + 2] += 0.125 * A[N - i + K][j];
    }
  }
  for (int i = 0; i < K; i++) {
    if ((i) % 2 == 0) {
      for (int j = max(0, i - 2); j < min(K, i + 4); j++) {
        if ((i) % 2 == 0 && j > 0) {
          A[M - j + K][i + 2] += 0.125 * A[2 * i + K + 1][j + 2] + 0.0625 * A[2 * i + K + 2][K - j + 1] * alpha;
        }
      }
    }
  }
  for (int i = 0; i <= M - 2; i++) {
    A[i + K + 1][i + 2] += 0.0625 * A[i + K][i + 2];
  }
  for (int i = 0; i < N; i++) {
    if ((i) % 2 == 1 && i + 1 < N) {
      A[i + K + 1][i + 2] += 0.125 * A[i + K + 1][2];
    }
  }
}
