void fz(int M, int A[M + 1][M + 1][M + 1], double B[M + 4]) {
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < i; j++) {
      A[j][j][i] = A[i][j][j];
    }
  }
  for (int i = 2; i < 5; i++) {
    for (int j = 0; j < M; j++) {
      B[i + j] = 0.125 * B[j];
    }
  }
}
