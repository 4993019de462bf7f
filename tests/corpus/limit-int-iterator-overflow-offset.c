// expect: - overflow
// options: --size N=2147483640 --target openmp --no-check
void f(int N, double A[4]) {
  for (int i = N; i < N + 10; i++)
    A[0] += 1.0;
}
