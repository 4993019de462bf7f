void fz(int N, int M, int K, double alpha, double A[K + 2 * M + N + 1][K + M + N + 1], double B[M + N + 1][2 * M + 2 * N + 1], double C[2 * N + 1][2 * N + 1], float D[2][K + 1][K + 1]) {
  for (int i = 1; i < max(M, N - 1); i++) {
    if ((i) % 2 == 1 && (i) % 2 == 1) {
      A[i + M][i + K] *= 0.5 * A[i + M + 1][K];
    } else {
      B[i - 1][2 * i + 1] += 0.125 * A[N - i + M - 1][i + K];
    }
  }
  for (int i = 2; i < K; i++) {
    for (int j = 0; j < 1; j++) {
      for (int k = 2; k < N; k++) {
        for (int l = max(0, k - 1); l < min(N, k + 2); l++) {
          C[2 * k + 1][l - k + N] += 0.125 * C[2 * k + 2][l - k + N] * alpha;
        }
      }
    }
    for (int j = i - 1; j >= 2; j--) {
      D[1][j][i - 2] += 0.0625 * A[j + M][N - i + K - 1];
    }
  }
}
