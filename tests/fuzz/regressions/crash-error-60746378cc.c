void fz(int N, double A[2 * N + 2][N + 1]) {
  for (int i = 0; i < N; i++) {
    A[i][i] = 0.0625 * A[1][0];
    for (int j = 0; j < N; j += 2) {
      for (int k = 0; k < N; k++) {
        A[i + 1][k] = 0.375 * A[2 * j + 1][k];
      }
    }
  }
}
