void fz(int K, int T, double A[2 * K + 5][2 * K + 5]) {
  for (int t = 0; t < T; t++) {
    for (int i = 0; i <= K - 1; i++) {
      A[4][i + 1] += 0.125 * fmax(A[3][i + 1], A[4][i]);
      A[i + 2][3] += 0.0625 * A[2 * i + 2][i + 4];
      A[i][i + 5] = 0.375 * fmin(A[i + 2][i + 3], A[3][2 * i + 3]) + 0.0625 * A[i + 2][i + 5] + 0.0625 * A[i + 2][i + 3];
    }
  }
}
