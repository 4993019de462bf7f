void fz(int N) {
  for (int i = 1; i <= N - 1; i += 2) {
    double acc0 = 0.0;
  }
}
