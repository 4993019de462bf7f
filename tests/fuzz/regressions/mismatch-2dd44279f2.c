void fz(int N, int M, double A[M + 1][2 * N + 1], double B[M + 1]) {
  for (int i = M - 1; i >= 0; i--) {
    for (int j = max(0, i - 1); j < min(N, i + 4); j++) {
      for (int k = N - 1; k >= j + 1; k--) {
        A[i][k - j + N] += 0.0625 * B[i];
      }
    }
  }
}
