void fz(int N, double A[6][N + 5]) {
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < 6; j++) {
      A[j][i + j] *= 0.5;
    }
  }
}
