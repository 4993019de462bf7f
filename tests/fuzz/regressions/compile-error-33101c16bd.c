void fz(int N, float A[2 * N + 1][N + 2], double D[N + 1][N + 1]) {
  for (int i = 0; i <= N; i++) {
    for (int j = 0; j < N; j++) {
      if (j < i) {
        A[N][0] = 0.125 * A[i + N][0];
      } else {
        A[i + N][1] = 0.125 * A[j + N][1];
      }
    }
    for (int j = 0; j < N; j++) {
      A[-j + N][j] = 0.375 * D[j][i];
    }
  }
}
