void fz(int N, double A[2 * N + 5][N + 7], float B[N + 1]) {
  for (int j = 0; j < 6; j++) {
    for (int k = 0; k < j; k += 2) {
      for (int l = 0; l < N; l++) {
        A[k][j + 1] = 0.0625 * A[1][j + 1];
      }
    }
  }
  for (int i = 0; i <= N; i++) {
    A[i][i] = 0.25 * B[i] + 0.0625;
  }
  for (int i = 0; i < N; i++) {
    if ((i) % 2 == 0) {
    } else {
      A[2 * i + 1][i + 1] = 0.375 * A[N - i - 1][i + 1] + 0.0625;
    }
  }
}
