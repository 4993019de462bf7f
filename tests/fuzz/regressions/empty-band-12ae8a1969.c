void fz(double beta, double A[1][1][2]) {
  for (int i = 0; i < 2; i++) {
    for (int j = 1; j < i; j++) {
      A[0][0][i] = 0.0625 * beta;
    }
  }
}
