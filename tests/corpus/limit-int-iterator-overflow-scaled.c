// expect: - overflow
// options: --size N=1500000000 --target openmp --no-check
void f(int N, double A[4]) {
  for (int i = 0; i < 2 * N; i++)
    A[0] += 1.0;
}
