void fz(double A[2]) {
  for (int i = 0; i < 3; i++) {
    for (int j = 1; j < i; j++) {
      A[j] = 0.5;
    }
  }
}
