void fz(int N, float A[N + 3][N + 3], double B[N + 1][N + 2]) {
  for (int i = 2; i <= N - 1; i++) {
    for (int j = N - 1; j >= i + 1; j--) {
      A[i][j + 2] = 0.25 * A[i + 1][j + 2];
    }
    for (int j = max(0, i - 2); j < min(N, i + 4); j++) {
      if (j > i) {
        A[i + 1][j + 2] = 0.25 * A[i + 1][j + 3] + 0.0625 * A[i + 3][j + 2];
      } else {
        A[j][N - i + 1] = 0.375 * A[j][N - i - 1] + 0.0625 * B[i - 2][j + 2];
      }
    }
  }
}
