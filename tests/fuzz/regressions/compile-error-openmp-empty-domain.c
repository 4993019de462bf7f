void fz(int N, int M, float A[2 * M + N + 1][M + 2 * N + 1][M + N + 1]) {
  for (int i = N - 1; i >= 0; i--) {
    if ((i) % 2 == 0 && (i) % 2 == 1) {
      for (int j = i; j < M; j++) {
        A[2 * j][2 * i][j + 1] = 0.375 * A[i + 1][j][i + 1];
      }
    }
  }
}
