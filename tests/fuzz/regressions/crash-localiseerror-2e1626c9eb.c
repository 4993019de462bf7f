void fz(int T, int A[T + 1][T + 3], int B[T + 1], int C[T + 1][2 * T + 1]) {
  for (int t = 0; t < T; t++) {
    for (int i = T - 2; i >= 1; i--) {
      A[i + 1][2] = (A[i - 1][2] + B[i - 1] + C[i][2 * i + 2]) / 3;
      A[i + 2][i] = (C[i - 1][i - 1] + 3) / 2;
    }
  }
}
