void fz(int M, int T, double A[M + 1][M + 1][M + 1]) {
  for (int t = 0; t < T; t++) {
    double acc0 = 0.0;
    for (int i = 0; i <= M - 2; i++) {
      acc0 = 0.0625 * A[i][i][i];
    }
  }
}
